package sqlite

// testHook is nil in production. Tests set it (in export_test.go, before
// any Store opens) to act at named points of the writer goroutine's work:
//
//	"take-in":       a batch that takes in late ops applied those it has
//	                 and is about to look for more (writer.go: joinBatch);
//	"before-commit": a batch's statements ran, COMMIT is about to be sent;
//	"light-committed": a light batch (light.go) committed with
//	                 synchronous=NORMAL, none of its callers answered yet:
//	                 its changes are readable by every process, not on disk;
//	"after-commit":  COMMIT returned, no caller of the batch answered yet;
//	"answering":     the batch committed and the Store has taken in what it
//	                 did (its waiters rows, quotas, watches: committed);
//	                 no caller of the batch answered yet;
//	"handing-over":  the batch's callers are answered, the acquires a
//	                 release handed the name to are not yet.
//	"acquire-answered": (not the writer's) a waiting Acquire's try was
//	                 answered, the call is about to settle its parked op.
//	"joining":       (not the writer's) Open holds the file's gate, the
//	                 file identified, before SQLite's writer opens it.
//
// The crash tests kill the process there. Tests in one process set a hook
// on one store instead (SetStoreHook in export_test.go).
var testHook func(point string)

// hook calls testHook at point, if set.
func hook(point string) {
	if testHook != nil {
		testHook(point)
	}
}
