"""Installs groundwatch: the packages, the sample traffic and SQL files, and the `groundwatch` command.

`pip install -e .` is all the main job needs; `pip install -e .[test]` adds what the tests need.
Beam also ships this file to remote workers (`--setup_file ./setup.py`).
"""

from setuptools import find_packages, setup

setup(
    name="groundwatch",
    version="0.1.0",
    description="Continuous audit of whether a RAG system's answers are supported by their evidence.",
    license="Apache-2.0",
    python_requires=">=3.11,<3.12",
    packages=find_packages(include=["schemas*", "transforms*", "pipelines*", "dashboards*"]),
    package_data={
        "pipelines": ["data/*.jsonl", "reviewing/templates/*.html"],
        "dashboards": ["*.sql", "queries/*.sql"],
    },
    include_package_data=True,
    install_requires=[
        "apache-beam>=2.77,<2.78",
        # crc32c: kafka-python checks and computes CRC-32C of every record batch, in pure Python without it
        # (about 0.12 us a byte: a quarter of a millisecond for each 2 KB message read or produced).
        "kafka-python[crc32c]>=3.0,<4",
        "pydantic>=2.7,<3",
        "pydantic-core>=2.14,<3",  # PydanticCustomError: the contract's own error codes (schemas.responses)
        "openai>=1.50,<3",
        "pyarrow>=17,<26",
        "fsspec>=2024.9",  # DuckDB reads a lake in object storage through fsspec's wrapper of pyarrow's filesystem
        "duckdb>=1.1,<3",
        "evidently>=0.7.20,<0.8",
        # evidently 0.7 does not import with pandas 3
        "pandas>=2.2,<3",
        # imported by our code directly, so declared even where another dependency brings them today
        "grpcio>=1.60,<2",  # the local SDK worker pool (pipelines.runner.worker_pool)
        "httpx>=0.27,<1",  # the judge's HTTP timeouts and transport (transforms.verify.judge.client)
        "matplotlib>=3.8,<4",  # the charts of `groundwatch report` and `groundwatch calibrate --report`
        "scipy>=1.11,<2",  # the incidents' one-sided Welch t-test (transforms.monitoring.incident_stats)
        "uvicorn>=0.30,<1",  # the ASGI server of `groundwatch serve` (uses httptools and uvloop when installed)
        # the lake manifest's no-overwrite create on S3 (If-None-Match), which pyarrow's filesystem lacks
        "boto3>=1.34,<2",
        "botocore>=1.34,<2",
        # the review web app (`groundwatch review`): Starlette routes, Jinja2 pages, form posts
        "starlette>=0.40,<2",
        "jinja2>=3.1,<4",
        "python-multipart>=0.0.9",
        "tqdm>=4.66,<5",  # the progress bar of long commands on a terminal (pipelines.runner.progress)
    ],
    extras_require={
        # the model stage (--verifier model, the three-stage cascade): a local ONNX cross-encoder on CPU
        "model": ["onnxruntime>=1.18,<2", "tokenizers>=0.19,<1", "numpy>=1.26"],
        "test": [
            # pytest 9.2 gives tests structured ids that pytest-xdist 3.8 cannot suffix, so `--dist loadgroup`
            # silently stops grouping (pytest-xdist issue 1386); tests/unit/test_tier_guard.py checks it groups.
            "pytest>=8,<9.2",
            "pytest-timeout>=2.3,<3",
            "hypothesis>=6.100,<7",  # property tests: hostile messages through the file and Kafka paths
            "ruff>=0.6",
            "mypy>=1.11,<3",
            # the model stage's tests build a tiny ONNX model and a WordPiece tokenizer themselves
            "onnxruntime>=1.18,<2",
            "tokenizers>=0.19,<1",
            "onnx>=1.16,<2",
            "numpy>=1.26",
            # a real S3-protocol server on 127.0.0.1 for the object-storage tests
            "moto[server]>=5,<6",
            # `make coverage`: branch coverage, also of the commands the tests start (patch = subprocess)
            "coverage>=7.10,<8",
            # scripts/test.sh runs the tiers on two workers where that measured faster (docs/benchmarks.md)
            "pytest-xdist>=3.6,<4",
            # the review app's browser test drives Debian's chromium through its chromium-driver
            "selenium>=4.20,<5",
        ],
    },
    entry_points={"console_scripts": ["groundwatch = pipelines.cli:console"]},
)
