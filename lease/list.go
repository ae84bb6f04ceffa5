package lease

import (
	"context"
	"fmt"
)

// ListAll follows the pages of st.List and returns every live lease whose
// name starts with prefix, sorted by name. The pages are read one after the
// other, not in one snapshot: a lease granted or released meanwhile may or may
// not be in the result. It holds every lease in memory: to print or count a
// large store, use ListEach.
//
// Errors: those of Store.List, and an error when a store returns a page that
// does not move forward (a broken store must not make ListAll loop).
func ListAll(ctx context.Context, st Store, prefix string) ([]Info, error) {
	var all []Info
	err := ListEach(ctx, st, prefix, func(page []Info) error {
		all = append(all, page...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// ListEach follows the pages of st.List as ListAll does, and calls fn with
// each page (sorted by name, at most MaxListLimit leases) before it asks for
// the next, so that a caller that prints or counts holds one page at a
// time. fn must not keep the slice. An error of fn stops the walk and is
// returned as it is.
//
// Errors: those of Store.List and fn, and an error when a store returns a
// page that does not move forward.
func ListEach(ctx context.Context, st Store, prefix string, fn func(page []Info) error) error {
	req := ListRequest{Prefix: prefix, Limit: MaxListLimit}
	for {
		page, err := st.List(ctx, req)
		if err != nil {
			return err
		}
		if err := fn(page.Leases); err != nil {
			return err
		}
		if page.Next == "" {
			return nil
		}
		if page.Next <= req.After {
			return fmt.Errorf("lease: list %q: the page after %q goes back to %q", prefix, req.After, page.Next)
		}
		req.After = page.Next
	}
}
