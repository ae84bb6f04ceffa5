package token_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/picketlock/picket/token"
)

// ExampleWriteFile: a shared file replaced whole under fencing tokens. A
// holder paused past its lease wakes up after the next holder wrote; its
// late write is refused and the file keeps the newer data.
func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "fenced-file")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "schedule.json")

	fmt.Println(token.WriteFile(ctx, path, 41, []byte(`{"by":"A"}`), 0o644)) // holder A, token 41
	fmt.Println(token.WriteFile(ctx, path, 42, []byte(`{"by":"B"}`), 0o644)) // A paused; B, token 42
	err = token.WriteFile(ctx, path, 41, []byte(`{"by":"A, late"}`), 0o644)  // A wakes up
	var stale *token.StaleError
	if errors.As(err, &stale) { // errors.Is(err, token.ErrStale): A must stop
		fmt.Printf("stale: token %d, highest %d\n", stale.Token, stale.Highest)
	}

	data, highest, err := token.ReadFile(ctx, path)
	fmt.Println(string(data), highest, err)
	// Output:
	// <nil>
	// <nil>
	// stale: token 41, highest 42
	// {"by":"B"} 42 <nil>
}
