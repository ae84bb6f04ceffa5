package sqlite

// DecodeEvents decodes a history row, for the crash tests, which read the
// file raw.
var DecodeEvents = decodeEvents
