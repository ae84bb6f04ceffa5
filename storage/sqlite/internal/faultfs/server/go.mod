module github.com/picketlock/picket/storage/sqlite/internal/faultfs/server

go 1.26.0

require github.com/picketlock/picket v0.0.0-00010101000000-000000000000

replace github.com/picketlock/picket => ../../../../..

require (
	github.com/hanwen/go-fuse/v2 v2.12.1
	golang.org/x/sys v0.50.0
)
