package shell

import (
	"os"

	"golang.org/x/sys/windows"
)

// enableVT lets the console interpret the VT sequences the line editor writes
// (Windows 10 and later); an older console falls back to plain lines.
func enableVT(out *os.File) error {
	h := windows.Handle(out.Fd())
	var mode uint32
	if err := windows.GetConsoleMode(h, &mode); err != nil {
		return err
	}
	return windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING)
}

// watchResize does nothing on Windows: the console sends no signal when it is
// resized, and the line editor keeps the width it read at the start.
func watchResize(func()) {}
