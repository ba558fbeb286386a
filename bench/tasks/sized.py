"""What tasks cut from fixed, pre-shuffled splits share: first-n size options (`n_train`,
`n_aux`, `n_test`), `train_epochs`, their config entries and a cached data fingerprint."""

from __future__ import annotations

from typing import Any

from bench.core.errors import ConfigError
from bench.plugin.protocols import Splits, Task


class SizedTask(Task):
    """A task whose size options take the first n of each fixed split (None: all)."""

    def _init_sizes(
        self, n_train: int | None, n_aux: int | None, n_test: int | None, train_epochs: int
    ) -> None:
        for key, value in (("n_train", n_train), ("n_aux", n_aux), ("n_test", n_test)):
            if value is not None and value < 1:
                raise ConfigError(f"task {self.name}: {key} must be >= 1, got {value}")
        if train_epochs < 1:
            raise ConfigError(f"task {self.name}: train_epochs must be >= 1")
        self.n_train, self.n_aux, self.n_test = n_train, n_aux, n_test
        self.train_epochs = train_epochs
        self._splits: Splits | None = None
        self._fingerprint: str | None = None

    def _size_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "n_train": self.n_train,
            "n_aux": self.n_aux,
            "n_test": self.n_test,
            "train_epochs": self.train_epochs,
        }

    def data_fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = super().data_fingerprint()
        return self._fingerprint
