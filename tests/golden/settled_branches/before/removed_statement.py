import warnings

import torch


def quiet(verbose, model):
    if not verbose:
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    if model.training and verbose:
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    else:
        print("eval")
    if check(model):
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    return model


def only(verbose):
    if verbose:
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)


def nested(verbose, strict):
    if strict:
        if verbose:
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    return strict


def kept_comment(verbose):
    if verbose:  # the author's note stays, and so does the branch
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    return verbose


def check(model):
    return True
