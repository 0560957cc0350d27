def quiet(verbose, model):
    if model.training and verbose:
        pass
    else:
        print("eval")
    if check(model):
        pass
    return model


def only(verbose):
    pass


def nested(verbose, strict):
    return strict


def kept_comment(verbose):
    if verbose:  # the author's note stays, and so does the branch
        pass
    return verbose


def check(model):
    return True
