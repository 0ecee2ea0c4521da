package bench

import (
	"fmt"
	"io"
	"os"
)

func createFile(path string) (io.WriteCloser, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return f, nil
}
