package s3fence

// SetRaceHook makes f run in every Put and Delete between the read and the
// conditional write (f may write the object itself: a lost race), until
// restore is called.
func SetRaceHook(f func(key string)) (restore func()) {
	old := raceHook
	raceHook = f
	return func() { raceHook = old }
}
