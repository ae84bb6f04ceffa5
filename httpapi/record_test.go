package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// recordEnv names a directory: when it is set, every test server made by
// serve records each request and its answer there, for the check of the
// OpenAPI description against the contract tests (httpapi/openapitest).
const recordEnv = "PICKET_API_RECORD"

// exchange is one request and its answer, as recorded.
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

var recordMu sync.Mutex

// recordExchanges returns h, or with PICKET_API_RECORD set, h wrapped so
// that it appends each exchange to DIR/exchanges.jsonl. The request body is
// teed as the server reads it, so the server sees the request as sent.
func recordExchanges(tb testing.TB, h http.Handler) http.Handler {
	dir := os.Getenv(recordEnv)
	if dir == "" {
		return h
	}
	name := tb.Name()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(r.Body, &body), r.Body}
		rec := &exchangeRecorder{ResponseWriter: w, status: http.StatusOK}
		x := exchange{Test: name, Method: r.Method, URI: r.RequestURI, Host: r.Host, RequestHeader: r.Header.Clone()}
		h.ServeHTTP(rec, r)
		x.RequestBody, x.Status, x.ResponseHeader, x.ResponseBody = body.Bytes(), rec.status, w.Header().Clone(), rec.body.Bytes()
		line, err := json.Marshal(x)
		if err != nil {
			panic(err)
		}
		recordMu.Lock()
		defer recordMu.Unlock()
		f, err := os.OpenFile(filepath.Join(dir, "exchanges.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			panic(err)
		}
	})
}

// exchangeRecorder keeps a copy of the answer; Unwrap lets http.ResponseController
// reach the connection (long polls set its deadlines).
type exchangeRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *exchangeRecorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *exchangeRecorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *exchangeRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
