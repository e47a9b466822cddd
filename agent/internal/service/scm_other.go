//go:build !windows

package service

import (
	"context"
	"errors"
)

// Only Windows has a service control manager; these keep the shared code building.

func ConnectSCM() (SCMManager, error) {
	return nil, errors.New("the service control manager is Windows'")
}

func UnderSCM() bool { return false }

func RunAsService(func(string, ...any), func(context.Context) int, func()) (int, error) {
	return exitFail, errors.New("the service control manager is Windows'")
}
