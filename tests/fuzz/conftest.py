"""Memory bound of the in-process fuzz cases: the address space may grow by at most 4 GiB over what the test
process already maps (a blow-up such as an expanded alias bomb becomes a MemoryError finding, not a swapping CI
machine). Restored after the module."""

import resource

import pytest

HEADROOM = 4 * 2**30


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@pytest.fixture(autouse=True, scope="module")
def memory_bound():
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    mapped = _mapped_bytes()
    if mapped:
        cap = mapped + HEADROOM
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    yield
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
