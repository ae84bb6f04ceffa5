package etcd

import (
	"context"
	"fmt"

	"github.com/picketlock/picket/lease"
)

var _ lease.Revoker = (*Store)(nil)

// Revoke ends the live lease on req.Name (see lease.Revoker).
func (s *Store) Revoke(ctx context.Context, req lease.RevokeRequest) (lease.Info, error) {
	if err := req.Validate(); err != nil {
		return lease.Info{}, fmt.Errorf("etcd: revoke: %w", err)
	}
	return lease.Info{}, fmt.Errorf("etcd: revoke %q: not implemented yet: %w", req.Name, lease.ErrUnavailable)
}
