package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// Claiming a grant by lock. A grant to a waiter of another process
// (queue.go) is claimed by the waiter, or it lapses after claimWindow.
// The claim must exclude the lapse: once the waiter has answered its
// caller, nobody may take the grant back. A claim made in a batch of its
// own does that through SQLite's write lock, but costs a transaction
// between the release and the next holder's work. So the rung waiter
// claims by lock instead, with no write:
//
//   - the claim byte of row seq is claimBase + seq (seq is never reused);
//   - the waiter read-locks it (F_OFD_SETLK), then reads its row in a new
//     read transaction: marked with a token, the grant is claimed and
//     answered as made; otherwise it unlocks and polls as before;
//   - whoever takes a grant back (revokeLapsed) write-locks the byte first,
//     inside its write transaction, and keeps the lock until the batch
//     has committed: a byte it cannot lock is a claim, and the grant stays.
//
// The kernel makes the two locks exclude each other. A waiter that locked
// first keeps the grant (the taker cannot lock); one that locked after a
// taker unlocked reads after the taker's commit, and finds its row gone.
// Stores of one process share a descriptor, whose locks never conflict
// with each other: claimLocks records them in memory. The claimed row is
// deleted by the Store's next batch (at most claimRide later), and the
// read lock dropped once that batch has committed: from then on the grant
// is a lease like any other. A waiter that dies in between leaves its row
// unlocked: its grant lapses, as if never claimed (it has no holder left).
// Where the kernel offers no such locks (no descriptor of the file, not
// Linux) the waiter claims in a batch (queue.go: poll).

// claimRide is how long a claimed row waits for a batch of its Store to
// delete it before the Store runs one for it: a holder that releases within
// it deletes the row in its release's batch.
const claimRide = 20 * time.Millisecond

// claimKey names a claim byte of one file among this process's.
type claimKey struct {
	file any // the process's shared descriptor of the file (inode.go)
	seq  int64
}

// claimLock is a claim byte this process holds: read-locked by a claim, or
// write-locked by a Store that takes the grant back (revoking).
type claimLock struct {
	store    string // the Store holding it (its bell id)
	revoking bool
}

// claimLocks are this process's claim bytes; see claimKey.
var claimLocks = struct {
	sync.Mutex
	m map[claimKey]claimLock
}{m: map[claimKey]claimLock{}}

// claimRung claims by lock the grant another process made to the row of
// p, the parked op of a call its bell woke, and reports the grant. It
// reports false (nothing claimed) when the row holds no grant, the grant
// is being taken back, or locks cannot be had: the call then polls, and
// claims in a batch. It runs on the call's own goroutine, never beside a
// poll of the call: a poll after a claim would act a second time (one call,
// one effect).
func (s *Store) claimRung(p *op) (lease.Grant, bool) {
	seq := p.row.Load()
	if seq == 0 || !s.lockClaim(seq, false) {
		return lease.Grant{}, false
	}
	g, ok := s.readClaim(seq, p)
	if ok && p.state.CompareAndSwap(opPending, opAbandoned) { // no release here hands it the name now
		s.w.hook("claimed")
		s.waiters.forget(seq) // the next batch deletes the row, then unlocks
		time.AfterFunc(claimRide, func() {
			if s.waiters.forgetting(seq) {
				s.nudge()
			}
		})
		return g, true
	}
	s.unlockClaim(seq)
	return lease.Grant{}, false
}

// readClaim reads the grant in row seq, for p, in a read transaction that
// starts after the claim byte was locked, and answers it as a claim in a
// batch would (queue.go: claim): as granted — the lease written for the
// call, or, if it has ended since, as it was (expired: the caller's handle
// finds it lost). The row holds the token and the expiry; the rest is the
// call's own.
func (s *Store) readClaim(seq int64, p *op) (lease.Grant, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var tok, exp int64
	var epoch string
	st, err := s.claimStmt(ctx)
	if err == nil {
		err = st.QueryRowContext(ctx, seq).Scan(&tok, &exp, &epoch)
	}
	if err != nil || tok <= 0 || epoch != s.clock.Epoch() {
		// No grant, or deadlines of another epoch: a batch sorts it out.
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			s.logger.Log("msg", "read a rung waiter's row", "err", err)
		}
		return lease.Grant{}, false
	}
	now, wall := s.clock.Now(), s.clock.Wall()
	return lease.Grant{Name: p.name, Holder: p.holder, Owner: p.owner, Token: token.Token(tok), TTL: p.ttl,
		Expires: wall.Add(time.Duration(exp) - now).UTC()}, true
}

// claimStmt is readClaim's statement on the read pool, prepared once.
func (s *Store) claimStmt(ctx context.Context) (*sql.Stmt, error) {
	b := &s.bell
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.claimRead != nil {
		return b.claimRead, nil
	}
	st, err := s.rdb.PrepareContext(ctx, `SELECT token, lease_expires, (SELECT value FROM meta WHERE key = 'epoch')
		FROM waiters WHERE seq = ?`)
	if err != nil {
		return nil, err
	}
	b.claimRead = st
	return st, nil
}

// lockClaim takes the claim byte of row seq: a read lock for a claim, a
// write lock for a taker (revoke). It reports false if the other kind holds
// it, in this process or another. A taker that holds it already (its batch
// is run again) has it.
func (s *Store) lockClaim(seq int64, revoke bool) bool {
	f := s.claimFile()
	if f == nil {
		return revoke // no locks: no claim by lock, and takers go on as before
	}
	k := claimKey{file: f, seq: seq}
	claimLocks.Lock()
	defer claimLocks.Unlock()
	if c, ok := claimLocks.m[k]; ok {
		return revoke && c.revoking && c.store == s.bell.id
	}
	if err := s.setClaimLock(seq, revoke); err != nil {
		return false // held by another process, or the kernel said no
	}
	claimLocks.m[k] = claimLock{store: s.bell.id, revoking: revoke}
	return true
}

// unlockClaim drops the claim byte of row seq, if this Store holds it.
func (s *Store) unlockClaim(seq int64) {
	f := s.claimFile()
	if f == nil {
		return
	}
	k := claimKey{file: f, seq: seq}
	claimLocks.Lock()
	defer claimLocks.Unlock()
	if c, ok := claimLocks.m[k]; ok && c.store == s.bell.id {
		s.clearClaimLock(seq)
		delete(claimLocks.m, k)
	}
}

// claimsCommitted drops the claim bytes a committed batch is done with:
// the read locks of claimed rows it deleted (drop), and every write lock
// this Store took to take grants back (those of a batch that was rolled
// back go with the next commit).
func (s *Store) claimsCommitted(drop []int64) {
	f := s.claimFile()
	if f == nil {
		return
	}
	claimLocks.Lock()
	defer claimLocks.Unlock()
	if len(claimLocks.m) == 0 {
		return
	}
	for k, c := range claimLocks.m {
		if k.file == f && c.store == s.bell.id && (c.revoking || containsSeq(drop, k.seq)) {
			s.clearClaimLock(k.seq)
			delete(claimLocks.m, k)
		}
	}
}

// dropClaims drops every claim byte of this Store (it is closing).
func (s *Store) dropClaims() {
	f := s.claimFile()
	if f == nil {
		return
	}
	claimLocks.Lock()
	defer claimLocks.Unlock()
	for k, c := range claimLocks.m {
		if k.file == f && c.store == s.bell.id {
			s.clearClaimLock(k.seq)
			delete(claimLocks.m, k)
		}
	}
}

func containsSeq(seqs []int64, seq int64) bool {
	for _, x := range seqs {
		if x == seq {
			return true
		}
	}
	return false
}
