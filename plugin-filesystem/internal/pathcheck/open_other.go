//go:build !linux && !darwin && !windows

package pathcheck

import (
	"errors"
	"os"
)

// errUnsupported: without a way to refuse links along the whole path, opening is
// refused rather than done unsafely.
var errUnsupported = errors.New("no-follow open is not implemented on this system")

func openAt(string, string, int, os.FileMode) (*os.File, error) { return nil, errUnsupported }

func realPath(*os.File) (string, error) { return "", errUnsupported }
