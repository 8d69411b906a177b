"""Which container images are PAI's own: decided by the exact registry host, never by a name prefix.

PAI publishes its images in two registries (docs: `JobSpec.Image`, the DLC "images" page; /work/shared pai-facts):

* ``dsw-registry.<region>.cr.aliyuncs.com`` and its VPC endpoint ``dsw-registry-vpc.<region>.cr.aliyuncs.com``
  (``.../pai/pytorch-training:...``, ``.../pai/pai-megatron-patch:25.04``);
* the older ``registry.<region>.aliyuncs.com`` / ``registry-vpc.<region>.aliyuncs.com`` in the ``pai-dlc``
  namespace (``ImageItem`` doc). That host is Alibaba's shared container registry, where anyone may publish,
  so only its ``pai-dlc/`` namespace counts as PAI's.

``registry.attacker.example/evil/img:1`` or ``dsw-registry-vpc.cn-hangzhou.attacker.example/pai/x:1`` are not
PAI images: they are custom images (and the second one imitates PAI's host, which ``check`` reports).
"""

from __future__ import annotations

import re

_REGION = r"[a-z]{2}(?:-[a-z0-9]+){1,4}"
_DSW_HOST = re.compile(rf"^dsw-registry(?:-vpc)?\.(?P<region>{_REGION})\.cr\.aliyuncs\.com$")
_ACR_HOST = re.compile(rf"^registry(?:-vpc)?\.(?P<region>{_REGION})\.aliyuncs\.com$")
#: What a PAI registry host looks like at a glance (used to catch look-alikes on other domains).
_LOOKS_PAI = re.compile(r"^dsw-registry|aliyuncs\.com", re.IGNORECASE)


def image_host(image: str) -> str:
    """The registry host of an image reference (docker's rule: the first path part when it holds a dot or a
    colon or is ``localhost``; else the image is on Docker Hub)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first.lower()
    return "docker.io"


def pai_image_region(image: str) -> str | None:
    """The region of an official PAI image (``dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/...`` ->
    ``cn-hangzhou``); None for every other image."""
    if not isinstance(image, str) or not image or any(c.isspace() for c in image):
        return None
    host = image_host(image)
    path = image.partition("/")[2]
    m = _DSW_HOST.match(host)
    if m and path:
        return m.group("region")
    m = _ACR_HOST.match(host)
    if m and path.startswith("pai-dlc/"):
        return m.group("region")
    return None


def is_pai_image(image: str) -> bool:
    return pai_image_region(image) is not None


def imitates_pai(image: str) -> bool:
    """An image whose host is named like a PAI registry but is not one (``dsw-registry-vpc.x.attacker.example``,
    ``registry.cn-hangzhou.aliyuncs.com.attacker.example``): a job pointed at another registry than it seems to
    be. ``registry.gitlab.com`` or any other honestly named registry is a plain custom image."""
    if is_pai_image(image):
        return False
    host = image_host(image)
    if _ACR_HOST.match(host):  # Alibaba's shared registry outside pai-dlc/: a normal custom image
        return False
    return bool(_LOOKS_PAI.search(host)) and not host.endswith(".aliyuncs.com")
