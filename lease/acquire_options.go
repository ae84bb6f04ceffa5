package lease

import "time"

// AcquireOption adjusts one call of Manager.Acquire or Manager.TryAcquire:
// what the Manager's options say for every call, one call can say
// otherwise. A value out of range is ErrInvalid from that call, and the
// store is not asked.
type AcquireOption func(*acquireConfig)

// acquireConfig is what a call's AcquireOptions set.
type acquireConfig struct {
	holder    *string // WithHolder; nil for a fresh secret
	owner     string  // WithAcquireOwner; "" for the Manager's label
	lockDelay time.Duration
}

// WithHolder makes the call use the holder secret holder instead of a fresh
// one, to take over or resume a lease acquired earlier with that secret
// (after a restart, say, or from a script that kept Lease.Holder). The
// store hands the same grant back, extended, to the same holder, so two
// calls with the same holder on the same name do not exclude each other:
// give a secret only to resume. An empty or malformed secret is ErrInvalid.
func WithHolder(holder string) AcquireOption {
	return func(c *acquireConfig) { c.holder = &holder }
}

// WithAcquireOwner sets the owner label stored with this call's lease
// instead of the Manager's (WithOwner). "" means the Manager's label; at
// most MaxOwnerLen bytes.
func WithAcquireOwner(owner string) AcquireOption {
	return func(c *acquireConfig) { c.owner = owner }
}

// WithLockDelay sets this lease's lock-delay (AcquireRequest.LockDelay): how
// long the name stays unavailable after the lease expires unreleased. Zero
// means the store's default; at most MaxLockDelay; negative is ErrInvalid.
func WithLockDelay(d time.Duration) AcquireOption {
	return func(c *acquireConfig) { c.lockDelay = d }
}
