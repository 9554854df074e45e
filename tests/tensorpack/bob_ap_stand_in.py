"""``bob.ap`` stood in for, so that tensorpack's ``CTC-TIMIT/create-lmdb.py`` runs as written.

    python bob_ap_stand_in.py SCRIPT [ARGS...]

``create-lmdb.py`` extracts its MFCCs with ``bob.ap.Ceps``; bob.ap has no wheel (a source archive
building against blitz++ and boost). This runs ``SCRIPT`` as ``__main__`` (``runpy.run_path``, with
``sys.argv = [SCRIPT, *ARGS]``) with ``sys.modules['bob.ap']`` a module whose ``Ceps`` has bob's
signature and computes mel-frequency cepstral coefficients in NumPy: pre-emphasis, Hamming windows of
``win_length_ms`` every ``win_shift_ms``, the power spectrum, ``n_filters`` triangular mel filters
from ``f_min`` to ``f_max``, their log, the DCT-II, coefficients 1 to ``n_ceps`` (bob's without
``with_energy``). Not bob's numbers to the digit (nothing here can compute those), but MFCCs of the
signal: a phoneme's spectrum gives its own coefficients, so a model can learn phonemes from them.
"""
from __future__ import annotations

import os
import runpy
import sys
import types

import numpy as np


class Ceps:
    """``bob.ap.Ceps(sampling_frequency, win_length_ms, win_shift_ms, n_filters, n_ceps, f_min, f_max,
    delta_win, pre_emphasis_coeff, mel_scale, dct_norm)``; calling it on a signal gives the
    ``(frames, n_ceps)`` cepstra (see the module docstring)."""

    def __init__(self, sampling_frequency: float, win_length_ms: float = 20., win_shift_ms: float = 10.,
                 n_filters: int = 24, n_ceps: int = 19, f_min: float = 0., f_max: float = 4000.,
                 delta_win: int = 2, pre_emphasis_coeff: float = 0.95, mel_scale: bool = True,
                 dct_norm: bool = False) -> None:
        self.rate = float(sampling_frequency)
        self.win = int(round(self.rate * win_length_ms / 1000))
        self.shift = int(round(self.rate * win_shift_ms / 1000))
        self.n_ceps, self.pre_emphasis = int(n_ceps), float(pre_emphasis_coeff)
        self.nfft = 1 << (self.win - 1).bit_length()
        freqs = np.fft.rfftfreq(self.nfft, 1 / self.rate)

        def scale(f: np.ndarray) -> np.ndarray:
            return 2595 * np.log10(1 + f / 700) if mel_scale else f

        edges = np.linspace(scale(np.float64(f_min)), scale(np.float64(f_max)), n_filters + 2)
        if mel_scale:
            edges = 700 * (10 ** (edges / 2595) - 1)
        low, mid, high = edges[:-2, None], edges[1:-1, None], edges[2:, None]
        self.filters = np.maximum(0, np.minimum((freqs - low) / (mid - low), (high - freqs) / (high - mid)))
        k = np.arange(1, n_ceps + 1)[:, None]
        self.dct = np.cos(np.pi * k * (np.arange(n_filters) + 0.5) / n_filters)
        if dct_norm:
            self.dct *= np.sqrt(2.0 / n_filters)

    def __call__(self, signal: np.ndarray) -> np.ndarray:
        signal = np.asarray(signal, np.float64)
        emphasized = np.append(signal[:1], signal[1:] - self.pre_emphasis * signal[:-1])
        count = 1 + (len(emphasized) - self.win) // self.shift
        index = np.arange(self.win)[None, :] + self.shift * np.arange(count)[:, None]
        frames = emphasized[index] * np.hamming(self.win)
        power = np.abs(np.fft.rfft(frames, self.nfft)) ** 2
        energies = np.log(np.maximum(power @ self.filters.T, 1e-10))
        return energies @ self.dct.T


def main(argv: list[str]) -> None:
    bob = types.ModuleType("bob")
    bob.ap = types.ModuleType("bob.ap", "bob.ap stood in for by bob_ap_stand_in.py")  # type: ignore[attr-defined]
    bob.ap.Ceps = Ceps  # type: ignore[attr-defined]
    sys.modules.update({"bob": bob, "bob.ap": bob.ap})  # type: ignore[attr-defined]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
