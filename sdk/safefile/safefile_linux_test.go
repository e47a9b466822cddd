package safefile

import (
	"errors"
	"testing"
)

// A procfs file reports size 0 and is still read whole, and still bounded.
func TestReadFileOfUnknownSize(t *testing.T) {
	const path = "/proc/self/mountinfo"
	data, err := ReadFile(path, 16<<20)
	if err != nil || len(data) == 0 {
		t.Fatalf("ReadFile(%s) = %d bytes, %v", path, len(data), err)
	}
	if _, err := ReadFile(path, int64(len(data)/2)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile(%s) over the bound = %v, want ErrTooLarge", path, err)
	}
}
