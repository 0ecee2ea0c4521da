package main

import (
	"context"
	"errors"
	"io"
)

func profileStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("profileStatus: not implemented yet")
}

func profileCell(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("profileCell: not implemented yet")
}
