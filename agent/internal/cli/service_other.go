//go:build !windows

package cli

import (
	"context"
	"errors"
)

// Only Windows has a service control manager; these keep the shared code building.

func connectSCM() (scmManager, error) {
	return nil, errors.New("the service control manager is Windows'")
}

func underSCM() bool { return false }

func runAsService(func(string, ...any), func(context.Context) int, func()) (int, error) {
	return exitFail, errors.New("the service control manager is Windows'")
}
