# Example decks, each runnable as shipped: surge-train inputs/NAME.deck
inputsdir = $(pkgdatadir)/inputs
dist_inputs_DATA = inputs/demo.deck inputs/mlp-fmnist.deck inputs/vgg-mini-fmnist.deck \
  inputs/resnet-mini-fmnist.deck inputs/resnet-mini-bn-fmnist.deck inputs/vgg-mini-bn-fmnist.deck \
  inputs/resnet18-fmnist.deck inputs/vgg16-bn-fmnist.deck inputs/inception-v3-fmnist.deck inputs/gpt-fortunes.deck inputs/lr-sweep.deck inputs/gpt-2.5b.graph \
  inputs/gpt-3d.deck inputs/gpt-bpe.deck inputs/gpt2-124m.deck
