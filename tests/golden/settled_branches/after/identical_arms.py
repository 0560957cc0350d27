import torch


class Op(torch.nn.Module):
    def forward(self, x):
        return x + 1


def run(x, jit_mode):
    op = Op()
    op_jit = torch.export.export(op, (x,))
    return op_jit.module()(x)


def chosen_by_a_call(x, choose):
    op = Op()
    if choose("script"):  # a call may do anything: the branch stays
        op_jit = torch.export.export(op, (x,))
    else:
        op_jit = torch.export.export(op, (x,))
    return op_jit.module()(x)


def already_alike(x, flag):
    # The author's own identical arms: not the run's to change.
    if flag:
        y = x + 1
    else:
        y = x + 1
    return Op()(y)
