# sharebench harness image: the static sharebench binary on top of the workload image, so one image can run
# `sharebench profile cell --backend local` next to the workloads (Slurm containers, Kubernetes pods).
#
# Build the workload image first, then, from the repository root:
#   docker build -f docker/harness.Dockerfile -t sharebench-harness \
#       --build-arg WORKLOAD_IMAGE=sharebench-workload .
ARG WORKLOAD_IMAGE=sharebench-workload:latest

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so that source edits do not invalidate the module download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: no glibc requirement and no NVML cgo binding; telemetry falls back to nvidia-smi
# (docs/runner.md). -trimpath keeps build paths out of the binary.
RUN CGO_ENABLED=0 go build -trimpath -o /out/sharebench ./cmd/sharebench \
 && /out/sharebench help >/dev/null

FROM ${WORKLOAD_IMAGE}
COPY --from=build /out/sharebench /usr/local/bin/sharebench
# The workload image already holds workloads/ in /opt/sharebench; refresh it from this context so the binary
# and the scripts come from the same revision.
COPY workloads/ /opt/sharebench/
WORKDIR /opt/sharebench
# No ENTRYPOINT, as in the workload image: callers give the full command (`sharebench profile cell …`).
CMD ["sharebench", "help"]
