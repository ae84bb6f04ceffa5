package openapitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// exchange is one request and its answer, as httpapi's tests record them
// (httpapi/record_test.go).
type exchange struct {
	Test           string      `json:"test"`
	Method         string      `json:"method"`
	URI            string      `json:"uri"`
	Host           string      `json:"host"`
	RequestHeader  http.Header `json:"request_header"`
	RequestBody    []byte      `json:"request_body"`
	Status         int         `json:"status"`
	ResponseHeader http.Header `json:"response_header"`
	ResponseBody   []byte      `json:"response_body"`
}

// specFile is the description the server embeds and serves.
var specFile = filepath.Join("..", "openapi.yaml")

// loadSpec loads and validates the OpenAPI description.
func loadSpec(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(specFile)
	if err != nil {
		t.Fatalf("loading %s: %v", specFile, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s is not a valid OpenAPI description: %v", specFile, err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("%s is OpenAPI %s; want 3.1", specFile, doc.OpenAPI)
	}
	doc.Servers = nil // route any host: the tests' servers listen on random ports
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, router
}

// TestContractTestsMatchOpenAPI runs httpapi's tests against their real
// servers (127.0.0.1) with every exchange recorded, then validates each one
// against the description with kin-openapi: every answer's status, headers
// and body (JSON schemas, content types) for its route; the request too
// when the server accepted it (2xx), so the description is not stricter than
// the server. Requests on no route of the description (unknown paths,
// methods a path does not take, paths that are not canonical) must be
// answered with the Error schema. Then every operation must have been
// answered with success, and every error status the description lists must
// have been seen at least once.
//
// The control: the same exchanges against the description with one field
// of the grant (holder) left out must fail, or the validation checks
// nothing.
func TestContractTestsMatchOpenAPI(t *testing.T) {
	doc, router := loadSpec(t)
	exchanges := record(t)
	if len(exchanges) < 500 {
		t.Fatalf("only %d exchanges recorded: are the tests still recording (httpapi/record_test.go)?", len(exchanges))
	}
	seen := validate(t.Errorf, doc, router, exchanges)
	checkCoverage(t, doc, seen)
	t.Logf("%d exchanges validated; %d (operation, status) pairs seen", len(exchanges), len(seen))

	grant := doc.Components.Schemas["Grant"].Value
	delete(grant.Properties, "holder")
	grant.Required = slices.DeleteFunc(grant.Required, func(s string) bool { return s == "holder" })
	caught := 0
	validate(func(string, ...any) { caught++ }, doc, router, exchanges)
	if caught == 0 {
		t.Errorf("control: a description whose grants have no holder passed every exchange")
	}
	t.Logf("control: a grant without holder: %d failures reported", caught)
}

// validate validates each exchange against doc, reports each failure (at
// most three per test, then how many more) and returns the (operation,
// status) pairs seen, as "METHOD /path status".
func validate(errorf func(string, ...any), doc *openapi3.T, router routers.Router, exchanges []exchange) map[string]bool {
	errorSchema := doc.Components.Schemas["Error"].Value
	seen := map[string]bool{}
	failures := map[string]int{}
	ctx := context.Background()
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	for _, x := range exchanges {
		fail := func(format string, args ...any) {
			if failures[x.Test]++; failures[x.Test] <= 3 {
				errorf("%s: %s %s → %d %s: %s", x.Test, x.Method, x.URI, x.Status, clip(x.ResponseBody), fmt.Sprintf(format, args...))
			}
		}
		req, routed, rest, err := x.request()
		if err != nil {
			fail("%v", err)
			continue
		}
		route, params, err := router.FindRoute(routed)
		if err != nil {
			// Not a route of the description: an error answer.
			if x.Status < 400 {
				fail("answered %d on no route of the description: %v", x.Status, err)
				continue
			}
			var v any
			if err := json.Unmarshal(x.ResponseBody, &v); err != nil {
				fail("the answer is not JSON: %v", err)
				continue
			}
			if err := errorSchema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
				fail("the answer is not the Error schema: %v", err)
			}
			continue
		}
		for name := range params {
			if rest != "" { // the one path parameter: a name or a key
				params[name] = rest
			}
		}
		seen[fmt.Sprintf("%s %s %d", route.Method, route.Path, x.Status)] = true
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
		if x.Status < 300 {
			if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
				fail("the server accepted a request the description refuses: %v", err)
			}
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.Status, Header: x.ResponseHeader, Options: opts}
		out.SetBodyBytes(x.ResponseBody)
		if x.Method == http.MethodHead {
			out.Options = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, ExcludeResponseBody: true}
		}
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			fail("the answer does not match the description: %v", err)
		}
	}
	for test, n := range failures {
		if n > 3 {
			errorf("%s: %d more", test, n-3)
		}
	}
	return seen
}

// checkCoverage wants every operation answered with success, and every
// error status the description lists seen somewhere.
func checkCoverage(t *testing.T, doc *openapi3.T, seen map[string]bool) {
	t.Helper()
	errorsSeen := map[string]bool{}
	for k := range seen {
		errorsSeen[k[strings.LastIndex(k, " ")+1:]] = true
	}
	// Not seen by design: 500 is never answered on purpose, and 429 comes
	// from the admission tests, which run servers of their own.
	unexercised := map[string]bool{"429": true, "500": true}
	var missing, unseen []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				key := fmt.Sprintf("%s %s %s", method, path, status)
				switch {
				case status < "300" && !seen[key]:
					missing = append(missing, key)
				case status >= "400" && !errorsSeen[status] && !unexercised[status]:
					missing = append(missing, key)
				case !seen[key]:
					unseen = append(unseen, key)
				}
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(unseen)
	for _, k := range missing {
		t.Errorf("%s: listed in the description, never answered by the contract tests", k)
	}
	t.Logf("listed, and seen only on other routes: %d", len(unseen))
}

// request rebuilds the recorded request, and the request to find its route
// with. A name or key in the path may hold slashes, escaped or not
// (/v1/kv/reports/daily and /v1/kv/reports%2Fdaily are one key), which an
// OpenAPI router does not take in a path parameter: the route is found with
// a one-segment stand-in, and rest is the name or key itself, unescaped.
// A PUT body without a Content-Type is application/octet-stream, as HTTP
// lets a recipient assume (RFC 9110, 8.3) and the server does.
func (x *exchange) request() (req, routed *http.Request, rest string, err error) {
	req, err = http.NewRequest(x.Method, "http://"+x.Host+x.URI, bytes.NewReader(x.RequestBody))
	if err != nil {
		return nil, nil, "", err
	}
	req.Header = x.RequestHeader.Clone()
	if x.Method == http.MethodPut && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	routed = req
	for _, prefix := range []string{"/v1/leases/", "/v1/kv/"} {
		escaped, ok := strings.CutPrefix(req.URL.EscapedPath(), prefix)
		if !ok || escaped == "" {
			continue
		}
		if rest, err = url.PathUnescape(escaped); err != nil {
			return nil, nil, "", err
		}
		u := *req.URL
		u.Path, u.RawPath = prefix+"name", ""
		routed = req.Clone(context.Background())
		routed.URL = &u
	}
	return req, routed, rest, nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// record runs httpapi's tests with PICKET_API_RECORD set and returns what
// their servers exchanged.
func record(t *testing.T) []exchange {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "test", "-count=1", "-timeout=10m", "./httpapi/")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "PICKET_API_RECORD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("httpapi's tests, recording: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "exchanges.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []exchange
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var x exchange
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
