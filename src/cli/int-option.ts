import { InvalidArgumentError } from 'commander';

/** A commander argument parser for whole numbers of at least `min`: a typo is refused naming the option, not run as NaN. */
export function intAtLeast(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected a whole number >= ${min}`);
    return n;
  };
}
