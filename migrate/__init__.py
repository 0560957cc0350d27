"""torchscript-migrate: move PyTorch code bases off TorchScript."""

__version__ = "0.1.0"
