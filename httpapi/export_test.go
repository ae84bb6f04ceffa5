package httpapi

// Hooks for the external tests (package httpapi_test) and their fuzz
// targets: the request decoders, which no exported API reaches alone.
var (
	DecodeAcquire = decodeAcquire
	DecodeRenew   = decodeRenew
	DecodeRelease = decodeRelease
)
