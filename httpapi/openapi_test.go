package httpapi_test

import (
	"bytes"
	"net/http"
	"os"
	"testing"

	"github.com/picketlock/picket/httpapi"
)

// TestOpenAPIServed: GET /openapi.yaml answers the description in this
// directory (docs/openapi.yaml links to it), open even with auth on; other
// methods are 405.
func TestOpenAPIServed(t *testing.T) {
	want, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, httpapi.WithAuthToken("s3cret"))
	a := e.do(t, http.MethodGet, "/openapi.yaml", "", nil)
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/yaml" || !bytes.Equal(a.body, want) {
		t.Errorf("GET /openapi.yaml: %d %q, %d bytes; want 200 application/yaml and openapi.yaml (%d bytes)", a.status, a.header.Get("Content-Type"), len(a.body), len(want))
	}
	if a := e.do(t, http.MethodPost, "/openapi.yaml", "{}", nil); a.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /openapi.yaml: %d; want 405", a.status)
	}
	docs, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil || !bytes.Equal(docs, want) {
		t.Errorf("docs/openapi.yaml is not httpapi/openapi.yaml (%v): it should be a link to it", err)
	}
}
