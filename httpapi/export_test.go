package httpapi

// Hooks for the external tests (package httpapi_test) and their fuzz
// targets: the request decoders, which no exported API reaches alone.
var (
	DecodeAcquire = decodeAcquire
	DecodeRenew   = decodeRenew
	DecodeRelease = decodeRelease
)

// SlotBeforeBody makes s take a request's in-flight slot before reading its
// body, as it did before: the control of the slow-body test.
func SlotBeforeBody(s *Server) { s.slotFirst = true }
