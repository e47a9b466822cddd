//go:build !unix && !windows

package subprocess

const defaultPath = "/bin"

func rootDir() string { return "/" }
