package main

import (
	"time"

	"github.com/picketlock/picket/lease"
)

// The stop schedule of "picket run".
//
// The lease's handle has a local deadline: the instant before the last
// successful acquire or renew was sent, plus the TTL, minus a margin (a tenth
// of the TTL). The store cannot expire the lease before it, so a command
// that is dead by then never overlaps the next holder's. While renewals
// succeed the deadline keeps moving out; when they fail, picket run stops
// the command backwards from it:
//
//	SIGTERM at  deadline - grace - killMargin
//	SIGKILL at  deadline - killMargin
//
// killMargin leaves the kernel time to deliver SIGKILL and tear the process
// group down before the deadline. A lease found already lost (a renewal the
// store rejected, or a deadline that passed while picket run itself was
// paused) gets SIGKILL at once: someone else may hold the name now.
//
// The grace must leave the renewals a chance: the first renewal goes out at
// a third of the TTL, and is given half a renewal period more to get through
// before SIGTERM. So grace ≤ TTL - margin - TTL/3 - TTL/6 - killMargin, that
// is 0.4·TTL - killMargin with the default margin (maxGrace).

// killMarginDivisor and maxKillMargin: killMargin is TTL/20, at most a
// second.
const (
	killMarginDivisor = 20
	maxKillMargin     = time.Second
)

// killMargin returns how long before the local deadline SIGKILL is sent.
func killMargin(ttl time.Duration) time.Duration {
	return min(ttl/killMarginDivisor, maxKillMargin)
}

// maxGrace returns the longest -grace that fits ttl (see above); it may be
// zero, never negative.
func maxGrace(ttl time.Duration) time.Duration {
	g := ttl - lease.DefaultMargin(ttl) - ttl/lease.KeepAliveDivisor - ttl/(2*lease.KeepAliveDivisor) - killMargin(ttl)
	return max(g.Truncate(time.Millisecond), 0)
}

// graceFor returns the grace to use for ttl: the one given, if it fits; the
// largest that fits, if the default does not. An explicit grace that does
// not fit is a usage error that names the largest that would.
func graceFor(ttl, grace time.Duration, explicit bool) (time.Duration, error) {
	most := maxGrace(ttl)
	if grace <= most {
		return grace, nil
	}
	if explicit {
		return 0, usagef("run: -grace %v leaves no room in a %v TTL: SIGKILL must land before the lease's local deadline, "+
			"and the renewals need their time first; the largest grace that fits is %v (or raise -ttl to %v)",
			grace, ttl, most, ttlFor(grace))
	}
	return most, nil
}

// ttlFor returns a TTL whose maxGrace is at least grace.
func ttlFor(grace time.Duration) time.Duration {
	ttl := max(grace*5/2, time.Second).Round(time.Second)
	for maxGrace(ttl) < grace {
		ttl += time.Second
	}
	return ttl
}

// stopAction is what the schedule says to do now.
type stopAction int

const (
	actNone stopAction = iota
	actTerm
	actKill
)

// stopSchedule decides when the command is stopped.
type stopSchedule struct {
	grace, margin time.Duration
	termSent      bool
	killAt        time.Time // set when SIGTERM is sent
}

// next says what to do at now, given the lease, and when to look again
// (zero: never, the command has been killed).
func (s *stopSchedule) next(now time.Time, l *lease.Lease) (stopAction, time.Time) {
	if leaseLost(l) != nil {
		return actKill, time.Time{}
	}
	if s.termSent {
		if !now.Before(s.killAt) {
			return actKill, time.Time{}
		}
		return actNone, s.killAt
	}
	deadline := l.Deadline()
	killAt := deadline.Add(-s.margin)
	termAt := killAt.Add(-s.grace)
	switch {
	case !now.Before(killAt):
		return actKill, time.Time{}
	case !now.Before(termAt):
		s.termSent, s.killAt = true, killAt
		return actTerm, killAt
	}
	// Not yet: look again at termAt, or sooner if the deadline passes
	// first, which it cannot; a renewal only moves it out.
	return actNone, termAt
}
