package sqlite

import (
	"context"
	"errors"
	"fmt"
)

// One clock for every live opener.
//
// Two processes in different time namespaces (unshare -T) share the host's
// boot id but not its boot clock, and neither can read the other's
// deadlines. The reboot rule (schema.go) keeps them safe: a batch that finds
// the file in another epoch holds every lease for its full TTL from now.
// But two live openers in different epochs would apply it to each other at
// every turn: each switch restarts every lease's TTL (a dead holder's lease
// never ends) and, with many leases, holds the write lock for seconds. So a
// Store refuses to join a file that another live opener uses in another
// epoch; the first opener of a file (after a reboot, say) still moves it to
// its own epoch.

// ErrOtherEpoch is returned by Open when another live opener of the file
// counts time on another boot clock: another time namespace, whose deadlines
// cannot be compared with this process's.
var ErrOtherEpoch = errors.New("sqlite: the file is open in another clock epoch")

// checkOpenersEpoch runs at Open, holding the gate, once the Store joined
// the file's openers; first reports that no other opener is live. Another
// live opener keeps the file in its epoch, so the file's epoch is theirs.
func (s *Store) checkOpenersEpoch(ctx context.Context, first bool) error {
	if first {
		return nil
	}
	var stored string
	err := s.retryBusy(ctx, func() error {
		return s.w.conn.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'epoch'").Scan(&stored)
	})
	if err != nil {
		return fmt.Errorf("read the file's clock epoch: %w", err)
	}
	if epoch := s.clock.Epoch(); stored != epoch {
		return fmt.Errorf("%w: another live opener counts time in the epoch %q, this process in %q (another time "+
			"namespace, or a clock that disagrees): their deadlines cannot be compared, and each would restart every "+
			"lease's TTL whenever it touched the file; open the file from processes of one time namespace", ErrOtherEpoch, stored, epoch)
	}
	return nil
}
