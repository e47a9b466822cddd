package sdk

import "os"

// guardStdout is a no-op on Windows (it returns nil): go-plugin captures os.Stdout
// after the handshake, and Windows programs do not write to the standard handle
// behind Go's back the way C libraries on Unix may write to descriptor 1.
func guardStdout() *os.File { return nil }
