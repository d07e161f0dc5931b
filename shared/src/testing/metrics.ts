/** One scrape of a Prometheus text exposition, to read samples by name and labels. */
export class Scrape {
  private readonly samples: { name: string; labels: Record<string, string>; value: number }[] = [];

  constructor(readonly text: string) {
    for (const line of text.split('\n')) {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) continue;
      const labels: Record<string, string> = {};
      for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
      this.samples.push({ name: match[1]!, labels, value: Number(match[3]) });
    }
  }

  /** The sum of the samples of this name whose labels include `labels`; 0 when there are none. */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.matching(name, labels).reduce((sum, sample) => sum + sample.value, 0);
  }

  has(name: string, labels: Record<string, string> = {}): boolean {
    return this.matching(name, labels).length > 0;
  }

  /** The distinct values of one label among the samples of a name. */
  labelValues(name: string, label: string, labels: Record<string, string> = {}): Set<string> {
    return new Set(this.matching(name, labels).map((sample) => sample.labels[label]!));
  }

  private matching(name: string, labels: Record<string, string>) {
    return this.samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  }
}

export async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`scraping ${url} answered ${response.status}`);
  return new Scrape(await response.text());
}
