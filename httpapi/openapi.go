package httpapi

import (
	_ "embed" // the OpenAPI description
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 description of HTTP API v1, in YAML: the same
// contract as docs/http-api.md, for client generators and validators. The
// Server answers it at GET /openapi.yaml, open like /healthz.
//
//go:embed openapi.yaml
var OpenAPI []byte

// openapi answers GET /openapi.yaml.
func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/yaml")
	h.Set("X-Content-Type-Options", "nosniff")
	_, err := w.Write(OpenAPI)
	return err
}
