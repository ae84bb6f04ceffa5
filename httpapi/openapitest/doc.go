// Package openapitest checks picket's OpenAPI description (httpapi/openapi.yaml,
// docs/openapi.yaml) against the real server: it runs httpapi's contract tests
// with every exchange recorded (PICKET_API_RECORD) and validates each request
// and answer with kin-openapi's openapi3filter.
//
// It is a module of its own so that kin-openapi and its dependencies stay out
// of the library's go.mod: the library's users never see them.
package openapitest
