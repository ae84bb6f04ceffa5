package lease

import (
	"context"
	"fmt"
)

// ListAll follows the pages of st.List and returns every live lease whose
// name starts with prefix, sorted by name. The pages are read one after the
// other, not in one snapshot: a lease granted or released meanwhile may or may
// not be in the result.
//
// Errors: those of Store.List, and an error when a store returns a page that
// does not move forward (a broken store must not make ListAll loop).
func ListAll(ctx context.Context, st Store, prefix string) ([]Info, error) {
	var all []Info
	req := ListRequest{Prefix: prefix, Limit: MaxListLimit}
	for {
		page, err := st.List(ctx, req)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Leases...)
		if page.Next == "" {
			return all, nil
		}
		if page.Next <= req.After {
			return nil, fmt.Errorf("lease: list %q: the page after %q goes back to %q", prefix, req.After, page.Next)
		}
		req.After = page.Next
	}
}
