"""notebooks/quickstart.ipynb runs from top to bottom and draws its latency plot.

Executed with nbclient on this interpreter's python3 kernel (ipykernel), in its own process and
SparkSession; skipped only when nbclient or ipykernel are not installed (they are test extras).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_runs(samples, tmp_path):
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import NATIVE_KERNEL_NAME, KernelSpecManager

    # A python3 kernel of *this* interpreter, whatever kernels the machine has installed.
    spec_dir = write_kernel_spec(tmp_path / "kernels" / NATIVE_KERNEL_NAME)
    manager = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    assert Path(spec_dir).name == NATIVE_KERNEL_NAME
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "KAFKA_WIRE_SAMPLES": str(samples)}
    client = nbclient.NotebookClient(
        nb,
        timeout=300,
        kernel_name=NATIVE_KERNEL_NAME,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        kernel_manager_class=_manager_class(manager, env),
    )
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Produce" in text and "kw.confluent_kafka" in text and "gzip" in text
    assert "ProduceRequest => key 0" in text and "required_acks" in text  # the krammar section
    assert any("image/png" in o.get("data", {}) for o in outputs if o.output_type == "display_data")


def _manager_class(spec_manager, env):
    from jupyter_client.manager import AsyncKernelManager

    class Manager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(kernel_spec_manager=spec_manager, **kwargs)

        async def _async_pre_start_kernel(self, **kw):
            kw["env"] = {**env, **kw.get("env", {})}
            return await super()._async_pre_start_kernel(**kw)

    return Manager
