// Package s3fence fences writes to an object in an S3-compatible object
// store: a Put or Delete with a fencing token lands only if the token is
// not lower than the one the object already carries. The compare and the
// write are one conditional request of the store's own: the helper reads
// the object's token and ETag, refuses a lower token, and writes with
// If-Match on that ETag (If-None-Match: * where there is no object), so the
// store itself refuses the write if anyone wrote in between — never a read
// followed by an unconditional write. A lost race (412 Precondition Failed,
// or 409 ConditionalRequestConflict while another conditional write is in
// flight) is retried by reading again, and ends in token.ErrStale once the
// newer object carries a higher token.
//
// # The object
//
// The token travels with the data, in the object itself: its body is one
// line "picket-token T\n" followed by your data, and its user metadata
// holds the same token (x-amz-meta-picket-token, for listings and people).
// The helpers read the token from the body's first line, never from the
// metadata alone: the body and the ETag come from one GET, so they belong
// to one version of the object (see "What the store must guarantee" for a
// server on which a HEAD does not). Get strips the line and returns your
// data; read such objects through this package, or skip the first line.
//
// A fenced Delete does not delete: it writes a tombstone, an object whose
// body is "picket-token T deleted\n" (and metadata picket-deleted: true),
// with the same conditional request. A real DELETE would forget the highest
// token, so that a paused holder's later Put with a lower token would create
// the object again; and DeleteObject with If-Match is not honoured by every
// server. Get of a tombstone is ErrNotFound, with its token. Remove
// tombstones (a lifecycle rule on the prefix, or by hand) only when no
// holder of an older token can still be running.
//
// Write the key only through this package while it is fenced: a plain
// PutObject replaces the object and its token with it.
//
// # What the store must guarantee
//
//   - Conditional writes, atomic with the write: PutObject with If-Match
//     (on an ETag) and If-None-Match: * must compare and publish as one
//     step, so that of two writers that read one ETag only one succeeds.
//     AWS S3 has them since August 2024 (If-None-Match) and November 2024
//     (If-Match), strongly consistent, answering 412 or 409
//     ConditionalRequestConflict; MinIO and Cloudflare R2 document both
//     headers on PutObject. Google Cloud Storage's XML API documents
//     If-Match and If-None-Match for reads only: its conditional write is
//     x-goog-if-generation-match, which this package does not send, so do
//     not fence GCS objects with it. A server that ignores the headers, or
//     checks them apart from the write, admits stale writes: test yours
//     before you trust it (as TestConcurrentWriters does versitygw).
//   - One GET answers one version: the ETag and the body of a GET must be
//     those of the same object. A torn answer that pairs an older token with
//     a newer ETag would let a stale write through.
//   - Read-after-write consistency (AWS S3 since December 2020): a GET after
//     a write acknowledged sees it, or a newer one.
//
// The tests run against versitygw (github.com/versity/versitygw) with its
// POSIX backend. It evaluates the preconditions again under a per-object
// lock while it publishes the new file (a rename), so a conditional PUT is
// atomic on one gateway process, and on several sharing one file system
// only through its lock files (on by default; --disable-object-lock-file
// makes it unsafe). Its HEAD is torn: it reads the metadata and then the
// ETag from the object's path, each on its own, so a write between them
// pairs one version's metadata with another's ETag. Its GET reads the ETag
// before it opens the file, so the body is never older than the ETag: a
// token read from the body is at least the token of the version the ETag
// names, and a write conditioned on that ETag then fails if the two
// differ. That is why the token is in the body.
//
// A stale token is a *token.StaleError (matching token.ErrStale), with the
// highest token seen: the writer must stop. A zero token, one above
// token.Max, an empty or overlong key, a Bucket without client or name is an
// error matching token.ErrInvalid, and nothing is sent.
package s3fence
