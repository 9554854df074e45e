"""Run a script as ``python SCRIPT ARGS...`` does, with OpenCV's windows replaced by a record of them.

    python run_without_display.py SCRIPT [ARGS...]

tensorpack's inference examples show their results in a window (``cv2.imshow`` then ``cv2.waitKey(0)``, waiting
for a key) before or after writing them to files. The OpenCV installed here is the headless build, which has no
windows: ``cv2.imshow`` raises ``cv2.error`` ("The function is not implemented"). Here ``cv2.imshow`` records the
window's name and the image's shape and ``cv2.waitKey`` returns -1 at once, as if a key had been pressed; nothing
else of the script changes. The script runs as ``__main__`` (``runpy.run_path``) with its folder first on
``sys.path``; at the end one line lists the windows shown: ``run_without_display: shown [(name, shape), ...]``.
"""
from __future__ import annotations

import os
import runpy
import sys
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv: list[str]) -> None:
    import cv2

    shown: list[tuple[str, tuple[int, ...]]] = []

    def imshow(name: str, image: Any) -> None:
        shown.append((name, tuple(image.shape)))

    def wait_key(delay: int = 0) -> int:
        return -1

    cv2.imshow, cv2.waitKey = imshow, wait_key
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    try:
        runpy.run_path(argv[0], run_name="__main__")
    finally:
        print(f"run_without_display: shown {shown}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
