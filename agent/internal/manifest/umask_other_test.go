//go:build !unix

package manifest

func setUmask(int) int { return 0 }
