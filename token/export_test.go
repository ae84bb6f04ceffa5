package token

// SetFileHook sets the hook of WriteFile's crash points (file.go), for the
// crash tests' children; nil removes it.
func SetFileHook(h func(point string)) { fileHook = h }
