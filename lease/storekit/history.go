package storekit

import "github.com/picketlock/picket/lease"

// PageOf returns the page of events (sorted by Seq, oldest first) that
// answers req, for stores that keep their history in memory.
func PageOf(events []lease.Event, req lease.HistoryRequest) lease.HistoryPage {
	limit := req.PageLimit()
	page := lease.HistoryPage{Events: []lease.Event{}}
	n := len(events)
	for i := range n {
		e := events[i]
		if req.Newest {
			e = events[n-1-i]
		}
		if req.After != 0 && (!req.Newest && e.Seq <= req.After || req.Newest && e.Seq >= req.After) {
			continue
		}
		if !req.Match(e) {
			continue
		}
		if len(page.Events) == limit {
			page.Next = page.Events[limit-1].Seq
			break
		}
		page.Events = append(page.Events, e)
	}
	return page
}
