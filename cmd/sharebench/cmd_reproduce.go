package main

import (
	"context"
	"errors"
	"io"
)

func cmdReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("cmdReproduce: not implemented yet")
}
