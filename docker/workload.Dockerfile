# sharebench workload image: PyTorch with CUDA, transformers, and workloads/ in /opt/sharebench.
#
# Build from the repository root (the context must contain workloads/):
#   docker build -f docker/workload.Dockerfile -t sharebench-workload .
#
# The base is pinned by tag. Pin it by digest as well when building for measurements: resolve the tag once
# (e.g. `docker buildx imagetools inspect <tag>`) and pass BASE=<tag>@sha256:<digest>. The digest is not
# written here because it has to come from the registry, not from memory.
ARG BASE=pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
FROM ${BASE}

# 4.46.3 supports torch 2.5; raise both together (e.g. a torch 2.11 base with transformers 5.x).
ARG TRANSFORMERS_VERSION=4.46.3
RUN python3 -m pip install --no-cache-dir "transformers==${TRANSFORMERS_VERSION}" \
 && python3 -c "import torch, torchvision, transformers; print(torch.__version__, torchvision.__version__, transformers.__version__)"

# Models are built from configs with random weights: the hub is never needed, so make sure it is never tried.
# Unbuffered output because protocol lines must reach the runner at once.
ENV HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

COPY workloads/ /opt/sharebench/
WORKDIR /opt/sharebench

# No ENTRYPOINT on purpose: the runner's docker backend passes the full command line
# (`docker run … IMAGE python3 /opt/sharebench/train.py …`, docs/runner.md), and an ENTRYPOINT of python3 would
# turn that into `python3 python3 …`. python3 is the default command instead.
CMD ["python3", "/opt/sharebench/train.py", "--help"]
