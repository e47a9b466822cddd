//go:build !linux

package main

// maxRSSKiB is only measured on Linux; elsewhere it reports -1.
func maxRSSKiB() int64 { return -1 }

// cpuSeconds is only measured on Linux; elsewhere it reports -1.
func cpuSeconds() float64 { return -1 }
