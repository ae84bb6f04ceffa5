// Package storekit is for those who implement lease.Store: the checks every
// store applies to its arguments (so that a bad request is lease.ErrInvalid
// with the same message from every store), the error for a write whose
// outcome is unknown, and small pieces that several stores share (a page of
// an in-memory history, the Reason of a watched change, a watch's sleep).
//
// Users of picket need none of it: they call lease.Manager, or a Store's
// methods, whose request types have their own Validate methods.
package storekit
