//go:build !linux && !darwin && !windows

package pathcheck

import (
	"errors"
	"io/fs"
	"os"
)

// errUnsupported: without a way to refuse links along the whole path, opening is
// refused rather than done unsafely.
var errUnsupported = errors.New("no-follow open is not implemented on this system")

func openAt(*Base, string, int, os.FileMode) (*os.File, error) { return nil, errUnsupported }

func statAt(*Base, string) (fs.FileInfo, error) { return nil, errUnsupported }

func openDir(string, bool) (*Base, error) { return nil, errUnsupported }

func realPath(*os.File) (string, error) { return "", errUnsupported }
