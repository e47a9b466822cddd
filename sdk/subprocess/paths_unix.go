//go:build unix

package subprocess

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func rootDir() string { return "/" }
