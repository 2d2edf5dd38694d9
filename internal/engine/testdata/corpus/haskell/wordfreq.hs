import qualified Data.Map.Strict as Map
import Data.Char (isAlpha, toLower)
import Data.List (sortBy)
import Data.Ord (comparing, Down (..))

wordFreq :: String -> [(String, Int)]
wordFreq = sortBy (comparing (Down . snd) <> comparing fst)
         . Map.toList
         . Map.fromListWith (+)
         . map (\w -> (w, 1))
         . words
         . map normalise
  where
    normalise c
      | isAlpha c = toLower c
      | otherwise = ' '

main :: IO ()
main = interact $ unlines . map (\(w, n) -> w ++ " " ++ show n) . take 3 . wordFreq
