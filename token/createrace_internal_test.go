package token

import (
	"errors"
	"fmt"
	"testing"
)

type stateErr string

func (e stateErr) Error() string    { return "ERROR: something (SQLSTATE " + string(e) + ")" }
func (e stateErr) SQLState() string { return string(e) }

// TestIsCreateRace: the ways PostgreSQL fails a CREATE TABLE IF NOT EXISTS
// that raced with another are a race, through a driver's SQLState method or
// its message alone, wrapped or not; any other error is not. 42710 ("type
// ... already exists") is the one TestCreateTableConcurrentPostgreSQL met
// about once in thirty runs before it was counted.
func TestIsCreateRace(t *testing.T) {
	for state, want := range map[string]bool{"23505": true, "42P07": true, "42710": true, "42601": false, "40001": false} {
		e := stateErr(state)
		for _, err := range []error{e, fmt.Errorf("exec: %w", e), errors.New(e.Error())} {
			if got := isCreateRace(err); got != want {
				t.Errorf("isCreateRace(%q) = %v, want %v", err, got, want)
			}
		}
	}
	if isCreateRace(nil) {
		t.Error("isCreateRace(nil) = true")
	}
}
