package token_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/picketlock/picket/token"
)

// This example replays why a lease needs fencing. Worker A takes the lease
// with token 1 and pauses past its TTL; B takes the lease with token 2 and
// writes; A wakes up, still believing it holds the lock, and writes too.
// Without fencing A's stale data wins. With a Fence where the data lives, A's
// write is rejected, A stops, and B's data survives. The lock service behaves
// the same in both runs; only the storage changes.
func Example() {
	// A stand-in for the lock service: one lease, a token counter that only
	// grows, time in seconds passed in by the caller.
	var (
		holder  string
		expires int
		last    token.Token
	)
	acquire := func(who string, now, ttl int) (token.Token, bool) {
		if holder != "" && now < expires {
			return 0, false
		}
		last++
		holder, expires = who, now+ttl
		return last, true
	}

	for _, fenced := range []bool{false, true} {
		holder, expires, last = "", 0, 0
		var (
			fence token.Fence
			value string
		)
		write := func(who string, t token.Token, data string) {
			if !fenced {
				value = data
				fmt.Printf("  %s writes %s with token %d: accepted\n", who, data, t)
				return
			}
			err := fence.Do(context.Background(), "report", t, func() error {
				value = data
				return nil
			})
			if errors.Is(err, token.ErrStale) {
				fmt.Printf("  %s writes %s with token %d: rejected, %s stops (%v)\n", who, data, t, who, err)
				return
			}
			fmt.Printf("  %s writes %s with token %d: accepted\n", who, data, t)
		}

		fmt.Println(map[bool]string{false: "without fencing:", true: "with fencing:"}[fenced])
		tokenA, _ := acquire("A", 0, 10) // A takes a 10 s lease, then pauses for 15 s
		if _, ok := acquire("B", 5, 10); !ok {
			fmt.Println("  B at 5 s: lease held by A")
		}
		tokenB, _ := acquire("B", 12, 10) // A's lease ended at 10 s
		write("B", tokenB, "B-data")
		write("A", tokenA, "A-data") // A wakes up at 15 s
		fmt.Println("  final:", value)
	}
	// Output:
	// without fencing:
	//   B at 5 s: lease held by A
	//   B writes B-data with token 2: accepted
	//   A writes A-data with token 1: accepted
	//   final: A-data
	// with fencing:
	//   B at 5 s: lease held by A
	//   B writes B-data with token 2: accepted
	//   A writes A-data with token 1: rejected, A stops (token: stale: "report" got token 1, highest seen is 2)
	//   final: B-data
}

func ExampleFence_Admit() {
	var f token.Fence
	fmt.Println(f.Admit("invoice/7", 5)) // the holder of token 5 writes
	fmt.Println(f.Admit("invoice/7", 5)) // and writes again
	err := f.Admit("invoice/7", 4)       // an older holder wakes up
	fmt.Println(errors.Is(err, token.ErrStale), err)
	err = f.Admit("invoice/7", 0) // no token at all: a mistake, not a stale holder
	fmt.Println(errors.Is(err, token.ErrStale), errors.Is(err, token.ErrInvalid), err)
	fmt.Println(f.Highest("invoice/7"))
	// Output:
	// <nil>
	// <nil>
	// true token: stale: "invoice/7" got token 4, highest seen is 5
	// false true token: invalid: zero is not a token
	// 5
}

func ExampleFence_Do() {
	var (
		f     token.Fence
		ctx   = context.Background()
		lines []string
	)
	appendLine := func(t token.Token, line string) error {
		// The check and the write happen under one turn of the fence: no
		// writer with a lower token can slip in between them.
		return f.Do(ctx, "log", t, func() error {
			lines = append(lines, line)
			return nil
		})
	}
	fmt.Println(appendLine(8, "from 8"))
	fmt.Println(appendLine(9, "from 9"))
	fmt.Println(appendLine(8, "from 8, late"))
	fmt.Println(lines)
	// Output:
	// <nil>
	// <nil>
	// token: stale: "log" got token 8, highest seen is 9
	// [from 8 from 9]
}

func ExampleMiddleware() {
	var fence token.Fence
	save := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "saved")
	})
	srv := httptest.NewServer(token.Middleware(&fence, nil)(save))
	defer srv.Close()

	for _, t := range []token.Token{3, 2} {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/kv/report", strings.NewReader("data"))
		token.Set(req.Header, t)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("token %d: %d %s", t, resp.StatusCode, body)
	}
	// Output:
	// token 3: 200 saved
	// token 2: 409 {"error":"stale_token","message":"token: stale: \"/kv/report\" got token 2, highest seen is 3","highest":3}
}
