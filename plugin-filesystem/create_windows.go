package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"unicode/utf16"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// ownerOnlySDDL gives full access to the file's owner (OWNER RIGHTS) and nobody else,
// and blocks inheritance from the directory (P), as upstream's host does.
const ownerOnlySDDL = "D:P(A;;GA;;;OW)"

// maxPath is Windows' classic path limit; upstream keeps the whole path below it.
const maxPath = 260

// tempName is upstream's Windows template: prefix, 32 lowercase hex digits from the
// system's random source, suffix.
func tempName(prefix, suffix string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b[:]) + suffix, nil
}

func tempPathFits(p string) bool { return len(utf16.Encode([]rune(p))) < maxPath }

// createTempEntry creates name in the held directory d with CREATE_NEW (or
// CreateDirectory), which fails on any existing entry, link included, and with the
// owner-only protected DACL from the start, so there is no moment when the entry has
// the directory's inherited access. Windows creates nothing relative to a handle: the
// entry is named by d's canonical path, which the handle, held without delete
// sharing, keeps from being renamed or replaced meanwhile.
func createTempEntry(d *pathcheck.Base, name string, isDir bool) (string, error) {
	p := filepath.Join(d.Path(), name)
	if !tempPathFits(p) {
		return "", errors.New("temporary path too long")
	}
	sd, err := windows.SecurityDescriptorFromString(ownerOnlySDDL)
	if err != nil {
		return "", err
	}
	sa := &windows.SecurityAttributes{SecurityDescriptor: sd}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	p16, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return "", err
	}
	if isDir {
		err = windows.CreateDirectory(p16, sa)
	} else {
		var h windows.Handle
		h, err = windows.CreateFile(p16, windows.GENERIC_READ|windows.GENERIC_WRITE, 0, sa,
			windows.CREATE_NEW, windows.FILE_ATTRIBUTE_TEMPORARY, 0)
		if err == nil {
			err = windows.CloseHandle(h)
		}
	}
	if errors.Is(err, windows.ERROR_FILE_EXISTS) || errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		return "", errTempExists
	}
	if err != nil {
		return "", err
	}
	return p, nil
}

// removeTempEntry deletes name, made by createTempEntry, from d.
func removeTempEntry(d *pathcheck.Base, name string, isDir bool) error {
	p := filepath.Join(d.Path(), name)
	if isDir {
		return os.RemoveAll(p)
	}
	return os.Remove(p)
}
