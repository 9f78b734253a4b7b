//go:build unix

package app

import (
	"os"
	"syscall"
)

// lockDataDir takes an exclusive lock on path for the life of the process (the kernel drops it
// when the process dies, however it dies) and reports whether it got it.
func lockDataDir(path, id string) (release func(), ok bool) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return func() {}, true // no lock to be had: nothing to compare with either
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return func() {}, false
	}
	// The id in the file is for a person looking (the lock is the flock): not writing it is harmless.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(id+"\n"), 0)
	return func() { f.Close() }, true
}
